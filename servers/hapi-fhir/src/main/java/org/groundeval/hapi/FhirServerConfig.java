package org.groundeval.hapi;

import ca.uhn.fhir.context.FhirContext;
import ca.uhn.fhir.context.support.IValidationSupport;
import ca.uhn.fhir.jpa.api.config.JpaStorageSettings;
import ca.uhn.fhir.jpa.api.dao.DaoRegistry;
import ca.uhn.fhir.jpa.api.dao.IFhirSystemDao;
import ca.uhn.fhir.jpa.config.util.HapiEntityManagerFactoryUtil;
import ca.uhn.fhir.jpa.config.util.ResourceCountCacheUtil;
import ca.uhn.fhir.jpa.dao.FulltextSearchSvcImpl;
import ca.uhn.fhir.jpa.dao.IFulltextSearchSvc;
import ca.uhn.fhir.jpa.dao.search.HSearchSortHelperImpl;
import ca.uhn.fhir.jpa.dao.search.IHSearchSortHelper;
import ca.uhn.fhir.jpa.model.config.PartitionSettings;
import ca.uhn.fhir.jpa.model.config.SubscriptionSettings;
import ca.uhn.fhir.jpa.model.dialect.HapiFhirH2Dialect;
import ca.uhn.fhir.jpa.provider.DaoRegistryResourceSupportedSvc;
import ca.uhn.fhir.jpa.provider.IJpaSystemProvider;
import ca.uhn.fhir.jpa.provider.JpaCapabilityStatementProvider;
import ca.uhn.fhir.jpa.search.DatabaseBackedPagingProvider;
import ca.uhn.fhir.jpa.search.IStaleSearchDeletingSvc;
import ca.uhn.fhir.jpa.search.StaleSearchDeletingSvcImpl;
import ca.uhn.fhir.jpa.util.ResourceCountCache;
import ca.uhn.fhir.rest.api.EncodingEnum;
import ca.uhn.fhir.rest.server.RestfulServer;
import ca.uhn.fhir.rest.server.provider.ResourceProviderFactory;
import ca.uhn.fhir.rest.server.util.ISearchParamRegistry;
import ca.uhn.fhir.rest.api.IResourceSupportedSvc;
import jakarta.persistence.EntityManagerFactory;
import java.util.HashMap;
import java.util.Map;
import javax.sql.DataSource;
import org.hibernate.cfg.AvailableSettings;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Primary;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.orm.jpa.LocalContainerEntityManagerFactoryBean;
import org.springframework.transaction.annotation.EnableTransactionManagement;

/**
 * The beans HAPI FHIR's JPA configuration expects from the application: the entity manager over
 * the H2 data source, the storage settings, paging, and the {@link RestfulServer} at /fhir/*.
 */
@Configuration
@EnableTransactionManagement
public class FhirServerConfig {

  /** Storage settings: deletes and $expunge allowed (groundeval removes what a case created). */
  @Bean
  public JpaStorageSettings jpaStorageSettings() {
    JpaStorageSettings settings = new JpaStorageSettings();
    settings.setExpungeEnabled(true);
    settings.setDeleteExpungeEnabled(true);
    settings.setAllowMultipleDelete(true);
    settings.setAllowExternalReferences(true);
    // Every search reads the database as it is now: a case's writes must be visible at once.
    settings.setReuseCachedSearchResultsForMillis(null);
    settings.setDefaultSearchParamsCanBeOverridden(true);
    return settings;
  }

  @Bean
  public PartitionSettings partitionSettings() {
    return new PartitionSettings();
  }

  @Bean
  public SubscriptionSettings subscriptionSettings() {
    return new SubscriptionSettings();
  }

  @Primary
  @Bean
  public LocalContainerEntityManagerFactoryBean entityManagerFactory(
      DataSource dataSource,
      ConfigurableListableBeanFactory beanFactory,
      FhirContext fhirContext,
      JpaStorageSettings storageSettings) {
    LocalContainerEntityManagerFactoryBean factory =
        HapiEntityManagerFactoryUtil.newEntityManagerFactory(beanFactory, fhirContext, storageSettings);
    Map<String, Object> properties = new HashMap<>();
    properties.put(AvailableSettings.DIALECT, HapiFhirH2Dialect.class.getName());
    properties.put(AvailableSettings.HBM2DDL_AUTO, "update");
    properties.put(AvailableSettings.SCANNER, "org.hibernate.boot.archive.scan.internal.DisabledScanner");
    properties.put(AvailableSettings.STATEMENT_BATCH_SIZE, "20");
    properties.put(AvailableSettings.USE_QUERY_CACHE, "false");
    properties.put(AvailableSettings.USE_SECOND_LEVEL_CACHE, "false");
    properties.put(AvailableSettings.SHOW_SQL, "false");
    properties.put("hibernate.search.enabled", "false");
    factory.setPersistenceUnitName("HAPI_PU");
    factory.setJpaPropertyMap(properties);
    factory.setDataSource(dataSource);
    return factory;
  }

  @Primary
  @Bean
  public JpaTransactionManager transactionManager(EntityManagerFactory entityManagerFactory) {
    JpaTransactionManager manager = new JpaTransactionManager();
    manager.setEntityManagerFactory(entityManagerFactory);
    return manager;
  }

  @Bean
  public IFulltextSearchSvc fullTextSearchSvc() {
    return new FulltextSearchSvcImpl();
  }

  @Bean
  public IHSearchSortHelper hSearchSortHelper(ISearchParamRegistry searchParamRegistry) {
    return new HSearchSortHelperImpl(searchParamRegistry);
  }

  @Bean
  public IStaleSearchDeletingSvc staleSearchDeletingSvc() {
    return new StaleSearchDeletingSvcImpl();
  }

  @Bean
  public DatabaseBackedPagingProvider databaseBackedPagingProvider() {
    DatabaseBackedPagingProvider paging = new DatabaseBackedPagingProvider();
    paging.setDefaultPageSize(20);
    paging.setMaximumPageSize(500);
    return paging;
  }

  @Bean
  public IResourceSupportedSvc resourceSupportedSvc(DaoRegistry daoRegistry) {
    return new DaoRegistryResourceSupportedSvc(daoRegistry);
  }

  @Bean(name = "myResourceCountsCache")
  public ResourceCountCache resourceCountsCache(IFhirSystemDao<?, ?> systemDao) {
    return ResourceCountCacheUtil.newResourceCountCache(systemDao);
  }

  @Bean
  public RestfulServer restfulServer(
      IFhirSystemDao<?, ?> systemDao,
      ResourceProviderFactory resourceProviders,
      IJpaSystemProvider systemProvider,
      JpaStorageSettings storageSettings,
      ISearchParamRegistry searchParamRegistry,
      IValidationSupport validationSupport,
      DatabaseBackedPagingProvider paging,
      @Value("${groundeval.hapi.server-address:}") String serverAddress) {
    RestfulServer server = new RestfulServer(systemDao.getContext());
    server.registerProviders(resourceProviders.createProviders());
    server.registerProvider(systemProvider);
    JpaCapabilityStatementProvider capabilities =
        new JpaCapabilityStatementProvider(
            server, systemDao, storageSettings, searchParamRegistry, validationSupport);
    capabilities.setImplementationDescription("groundeval HAPI FHIR test server (H2 in memory)");
    server.setServerConformanceProvider(capabilities);
    server.setDefaultResponseEncoding(EncodingEnum.JSON);
    server.setPagingProvider(paging);
    return server;
  }

  @Bean
  public ServletRegistrationBean<RestfulServer> fhirServlet(RestfulServer server) {
    ServletRegistrationBean<RestfulServer> registration = new ServletRegistrationBean<>(server, "/fhir/*");
    registration.setLoadOnStartup(1);
    return registration;
  }
}
